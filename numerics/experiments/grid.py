"""Sweep grids: the runs of a sweep as a product of listed values (Python or TOML).

See :mod:`numerics.experiments.sweep` for the TOML format; :class:`Grid` is re-exported there.
"""

from __future__ import annotations

import copy
import itertools
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

__all__ = ["Grid", "grid_from_dict", "load_grid", "one_line"]


def one_line(text: object) -> str:
    """``str(text)`` on one line, runs of white space folded: an error quoted inside another message.

    Examples
    --------
    >>> one_line(ValueError("bad value" + chr(10) + "    at line 2"))
    'bad value at line 2'
    """
    return " ".join(str(text).split())


def _where(index: int, count: int) -> str:
    return f" (sub-grid {index + 1} of {count})" if count > 1 else ""


def _axis(name: str, value: Any, where: str) -> tuple[Any, ...]:
    """A grid entry as the tuple of values it takes (a list/tuple is an axis, anything else fixed)."""
    if not isinstance(name, str):
        raise TypeError(f"grid keys must be strings (config field names); got {name!r}{where}")
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise ValueError(f"grid axis {name!r} has no values{where}; list at least one value")
        return tuple(copy.deepcopy(v) for v in value)
    return (copy.deepcopy(value),)


@dataclass(frozen=True, init=False)
class Grid:
    """A sweep's runs: the product of listed values, or a concatenation of such products.

    ``Grid(depth=[1, 2, 4], seed=[0, 1], model="nonlinear")`` is the product of its axes (a list
    or tuple is an axis; any other value, dicts included, is fixed; a fixed list-valued field is
    a one-element list of lists). Positional mappings are sub-grids whose products are
    concatenated in order; the keyword values are shared by all, a sub-grid's own keys override
    them. A config that occurs twice (same content hash) runs once, at its first position.

    Every point is built with ``config_type.from_dict`` (anything with ``from_dict``, ``to_dict``
    and ``content_hash``; default :class:`numerics.train.TrainConfig`) at construction, so an
    unknown key, a wrongly typed value or an empty grid raises here, naming the key and the
    sub-grid. ``subgrids`` holds each sub-grid's ``(name, values)`` axes, ``configs`` the
    distinct configs in grid order.

    References
    ----------
    A depth sweep measures R_L (paper eq. (12)) as a function of L to fit paper eq. (16).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Toy:
    ...     depth: int = 1
    ...     seed: int = 0
    ...     def to_dict(self): return {"depth": self.depth, "seed": self.seed}
    ...     @classmethod
    ...     def from_dict(cls, d): return cls(**d)
    ...     def content_hash(self): return f"{self.depth}-{self.seed}"
    >>> grid = Grid(depth=[1, 2, 4], seed=[0, 1], config_type=Toy)
    >>> len(grid), grid.configs[1]
    (6, Toy(depth=1, seed=1))
    >>> len(Grid({"depth": [1, 2]}, {"depth": 8, "seed": [0, 1]}, config_type=Toy))
    4
    """

    subgrids: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]
    config_type: Any
    configs: tuple[Any, ...] = field(repr=False, compare=False)

    def __init__(self, *subgrids: Mapping[str, Any], config_type: Any = None, **shared: Any):
        if config_type is None:
            from numerics.train import TrainConfig as config_type
        for attribute in ("from_dict", "to_dict", "content_hash"):
            if not hasattr(config_type, attribute):
                raise TypeError(f"config_type must have from_dict, to_dict and content_hash; "
                                f"{getattr(config_type, '__name__', config_type)!r} has no {attribute!r}")
        if not subgrids:
            if not shared:
                raise ValueError("grid is empty: give at least one parameter (e.g. depth = [1, 2, 4])")
            subgrids = ({},)
        normalised = []
        for index, sub in enumerate(subgrids):
            where = _where(index, len(subgrids))
            if not isinstance(sub, Mapping):
                raise TypeError(f"each sub-grid must be a mapping (a [[grid]] table); got {sub!r}{where}")
            merged = {**shared, **sub}
            normalised.append(tuple((name, _axis(name, value, where)) for name, value in merged.items()))
        object.__setattr__(self, "subgrids", tuple(normalised))
        object.__setattr__(self, "config_type", config_type)
        object.__setattr__(self, "configs", self._expand())

    def _expand(self) -> tuple[Any, ...]:
        unique: dict[str, Any] = {}
        for index, axes in enumerate(self.subgrids):
            names = [name for name, _ in axes]
            for values in itertools.product(*(values for _, values in axes)):
                try:
                    config = self.config_type.from_dict(dict(zip(names, values)))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"{one_line(exc)}{_where(index, len(self.subgrids))}") from None
                unique.setdefault(config.content_hash(), config)
        return tuple(unique.values())

    @classmethod
    def of(cls, configs: Sequence[Any]) -> "Grid":
        """The grid of exactly these configs, all of one type (no dict round trip); duplicates run once.

        Examples
        --------
        >>> from numerics.train import TrainConfig
        >>> cfgs = [TrainConfig(model="linear", d=2, N=2, P=4, depth=L) for L in (1, 2, 1)]
        >>> [c.depth for c in Grid.of(cfgs)]
        [1, 2]
        """
        configs = list(configs)
        if not configs:
            raise ValueError("grid is empty: no run configs given")
        config_type = type(configs[0])
        unique: dict[str, Any] = {}
        for config in configs:
            if type(config) is not config_type:
                raise TypeError(f"all configs of a grid must be of one type; got {config_type.__name__} and "
                                f"{type(config).__name__}")
            unique.setdefault(config.content_hash(), config)
        grid = object.__new__(cls)
        fixed = tuple(tuple((name, (value,)) for name, value in c.to_dict().items()) for c in unique.values())
        object.__setattr__(grid, "subgrids", fixed)
        object.__setattr__(grid, "config_type", config_type)
        object.__setattr__(grid, "configs", tuple(unique.values()))
        return grid

    def __len__(self) -> int:
        return len(self.configs)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.configs)

    def __add__(self, other: "Grid") -> "Grid":
        """Concatenate two grids of the same config type (sub-grids of both, in order)."""
        if not isinstance(other, Grid):
            return NotImplemented
        if other.config_type is not self.config_type:
            raise TypeError(f"cannot concatenate grids of {self.config_type.__name__} and "
                            f"{other.config_type.__name__}")
        subgrids = [{name: list(values) for name, values in axes} for axes in self.subgrids + other.subgrids]
        return Grid(*subgrids, config_type=self.config_type)


def grid_from_dict(data: Mapping[str, Any], *, config_type: Any = None) -> Grid:
    """The :class:`Grid` of a parsed TOML document (or an equal dict), e.g. ``tomllib.load(fh)``.

    Top-level keys are shared entries; an optional ``grid`` key holds a list of sub-grid tables
    (TOML ``[[grid]]``) whose products are concatenated. A malformed document raises
    ``ValueError``/``TypeError``.

    References
    ----------
    Sweeps over L feed the depth-law fit of paper eq. (16).

    Examples
    --------
    >>> doc = {"model": "linear", "d": 2, "N": 2, "P": 4, "seed": 3,
    ...        "grid": [{"depth": [1, 2]}, {"depth": 4, "seed": [0, 1]}]}
    >>> [(c.depth, c.seed) for c in grid_from_dict(doc)]
    [(1, 3), (2, 3), (4, 0), (4, 1)]
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"a grid must be a mapping (a TOML document); got {type(data).__name__}")
    shared = dict(data)
    subgrids = shared.pop("grid", None)
    if subgrids is None:
        return Grid(config_type=config_type, **shared)
    if not isinstance(subgrids, list) or not all(isinstance(sub, Mapping) for sub in subgrids):
        raise TypeError("'grid' must be a list of tables (TOML [[grid]] sections); "
                        f"got {type(subgrids).__name__}")
    if not subgrids:
        raise ValueError("grid is empty: 'grid' lists no sub-grids")
    return Grid(*subgrids, config_type=config_type, **shared)


def load_grid(path: str | os.PathLike, *, config_type: Any = None) -> Grid:
    """The :class:`Grid` of a TOML file (format: :mod:`numerics.experiments.sweep`).

    A missing file is a ``FileNotFoundError``; invalid TOML or an invalid grid a
    ``ValueError``/``TypeError`` whose message starts with the file name.

    References
    ----------
    Sweeps over L feed the depth-law fit of paper eq. (16).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     file = pathlib.Path(tmp, "g.toml")
    ...     _ = file.write_text('model = "linear"\\ntask = "easy"\\nd = 2\\nN = 2\\nP = 4\\ndepth = [1, 2]\\n')
    ...     [c.depth for c in load_grid(file)]
    [1, 2]
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"grid file {path} does not exist")
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        return grid_from_dict(data, config_type=config_type)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"grid file {path}: invalid TOML: {one_line(exc)}") from None
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"grid file {path}: {one_line(exc)}") from None

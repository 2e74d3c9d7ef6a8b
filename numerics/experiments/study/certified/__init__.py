"""The certified study: the best loss each depth of the controlled softmax model reaches, proved by certificates.

Split by job: :mod:`~numerics.experiments.study.certified.plan` (cells and candidates), :mod:`~numerics.experiments.study.certified.run` (one cell in lockstep; depths in
waves through the resumable store).
"""

from .plan import STARTS, TABLE1_SPECTRA, TOP16_SPECTRA, Candidate, CellConfig, CertifiedPlan, eval_seed
from .run import SUMMARY_COLUMNS, CellResult, nested_params, oracle_allocation, run_cell, run_certified_study

__all__ = ["STARTS", "TABLE1_SPECTRA", "TOP16_SPECTRA", "Candidate", "CellConfig", "CertifiedPlan", "eval_seed", "SUMMARY_COLUMNS",
           "CellResult", "nested_params", "oracle_allocation", "run_cell", "run_certified_study"]

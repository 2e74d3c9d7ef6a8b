"""The ``idepth`` command line: a thin layer over ``theory`` and ``numerics``."""

"""What is simulated: the paper's data (eqs. 1-6), its attention models
(eqs. 7-12, appendix C) in numpy, training, diagnostics and depth sweeps."""

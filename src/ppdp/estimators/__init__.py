"""Estimators shared by several mechanisms: iterative Bayesian reconstruction with its delta
method (`reconstruct`: SPLU-Gen's Section 5), and the per-group product of factors over
the groups of a release (`group_product`: ambiguity and generalization)."""

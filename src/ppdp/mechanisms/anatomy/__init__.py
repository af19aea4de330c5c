"""Anatomy (Xiao and Tao 2006), SPLU-Gen's partition-based comparator (Section 6): the
mechanism (`mechanism`), its release and estimator (`release`), its guarantee (`guarantee`)."""

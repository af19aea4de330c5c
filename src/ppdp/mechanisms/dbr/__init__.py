"""Distribution-based randomization (DBR), the comparator of SPLU-Gen Sections 3 and 6.2.3:
the mechanism (`mechanism`), its release and estimator (`release`), its guarantee
(`guarantee`)."""

"""Laplace counts, the differential-privacy comparator of SPLU-Gen Section 6.2.3: the
mechanism (`mechanism`), its query session (`session`), its guarantee (`guarantee`)."""

"""Ambiguity: alpha-presence and beta-association by publishing each quasi-identifier apart
("Ambiguity: Hide the Presence of Individuals and Their Privacy with Low Information Loss"): the
mechanism (`mechanism`), its groups (`groups`, Algorithm 2), its release and estimator
(`release`), its guarantee (`guarantee`)."""

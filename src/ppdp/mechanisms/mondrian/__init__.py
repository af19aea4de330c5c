"""Mondrian multidimensional generalization (LeFevre, DeWitt and Ramakrishnan, "Mondrian
multidimensional k-anonymity", ICDE 2006), the generalization baseline the ambiguity paper
compares with (Section 8): the mechanism (`mechanism`), its partitioning (`partition`), the
generalized values (`covers`), the steps engines run for sources beyond memory (`steps`), its
release and estimator (`release`), its guarantee (`guarantee`)."""

"""Tuple-level publishing under (d, gamma)-privacy (Rastogi, Suciu, Hong: "The boundary between
privacy and utility in data publishing", VLDB 2007): the alpha-beta algorithm (`mechanism`,
its views `views` and keyed draws `draws`, its release and estimator `release`, the tuple
domain `domain`, Theorems 4.3-4.4 `privacy`, its guarantee `guarantee`) and FRAPP's
gamma-diagonal randomization, its comparator (`frapp`)."""

"""SPLU-Gen: small-sum privacy, large-sum utility (Fu, Wang, Wong, Wang, Jiang, J. Biomed.
Inform. 2014): the mechanism (`mechanism`), its estimators (`release`, `decoy_transition`) and its
guarantees (`guarantee`: Lemmas 1-2, Theorem 4)."""

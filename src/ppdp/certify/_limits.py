"""What a certificate does not cover, in sentences a reader without the papers can follow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["not_covered"]

PRIORS = {
    "splu": "SPLU-Gen's bound on small counts holds for an adversary who estimates counts "
            "from the release alone; it says nothing about an adversary who already knows "
            "some of the individuals' sensitive values.",
    "anatomy": "Anatomy's bound (at most 1/l of a group shares one sensitive value) assumes "
               "an adversary who sees every value of a group as equally likely for each of "
               "its members; background knowledge that rules values out raises the risk.",
    "ambiguity": "Ambiguity's bounds on presence (alpha) and association (beta) assume an "
                 "adversary whose prior is uniform over the tuples a group covers.",
    "mondrian": "Mondrian's k-anonymity (and l-diversity) bounds no probability: it assumes "
                "an adversary who links by quasi-identifiers only, not one who knows other "
                "individuals' sensitive values.",
    "uniform": "(rho1, rho2)-privacy assumes an adversary whose prior belief in a protected "
               "value is at most rho1; a stronger prior is not bounded by rho2.",
    "sdr": "(rho1, rho2)-privacy assumes an adversary whose prior belief in a protected "
           "value is at most rho1 (in each sub-table, rho1_i); a stronger prior is not "
           "bounded by rho2.",
    "alphabeta": "(d, gamma)-privacy assumes tuples independent of one another with a prior "
                 "probability of at most d = k n / m each; correlated tuples or a stronger "
                 "prior are not covered.",
    "frapp": "(d, gamma)-privacy assumes tuples independent of one another with a prior "
             "probability of at most d = k n / m each; correlated tuples or a stronger prior "
             "are not covered.",
    "dbr": "Distribution-based randomization states no privacy bound: its risk is only what "
           "the attacks measured.",
}
"""The prior each mechanism's bound assumes (the adversary it holds against)."""


def not_covered(mechanism: str, guarantee: Any, attacks: Mapping[str, Any] | None,
                without_stderr: int, queries: int) -> list[str]:
    """The sentences of ``content["not_covered"]``: the prior of the bound, each attack's
    adversary model, estimators without standard errors, and what any certificate leaves
    out."""
    sentences = []
    if guarantee is None:
        sentences.append(f"The mechanism {mechanism} states no guarantee that ppdp computes: "
                         f"the certificate records measurements only.")
    prior = PRIORS.get(mechanism)
    if prior is not None:
        sentences.append(prior)
    if attacks is None:
        sentences.append("No attack was run on this release: the certificate shows no "
                         "measured attack success.")
    else:
        results: Sequence[Mapping[str, Any]] = attacks["results"]
        for result in results:
            sentences.append(f"The {result['attack']} attack measures an adversary who "
                             f"{_lowered(result['adversary'])}; an adversary who knows more "
                             f"may succeed more often.")
        for name in attacks["not_applicable"]:
            sentences.append(f"The {name} attack was not run: it does not apply to this "
                             f"release.")
    if without_stderr:
        sentences.append(f"{without_stderr} of the {queries} accuracy queries were estimated "
                         f"without a standard error: their counts come with no interval, "
                         f"and their accuracy is only the error measured here.")
    sentences.append("Other releases of the same individuals (earlier or later, by anyone) "
                     "are not taken into account: combined, they may disclose more.")
    sentences.append("The certificate covers the release's files as signed; it says nothing "
                     "of how the source data were collected or whether publishing them is "
                     "lawful.")
    return sentences


def _lowered(text: str) -> str:
    """An adversary's description continued in a sentence: a leading 'knows ...' stays."""
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text

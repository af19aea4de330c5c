"""Attribute inference by learning from the release.

The adversary knows a target's quasi-identifiers and trains a classifier on the release to
predict the attribute attacked (`ppdp.attack.learning`: exact matches, else naive Bayes). The
same classifier trained on the true rows of an independent half of the population is the
baseline: the accuracy gain is what the release teaches about the people in it beyond what
the population already teaches (Kifer, "Attacks on Privacy and deFinetti's Theorem", SIGMOD
2009, Section 1 and Section 5: a classifier built from the sanitized data, used to predict
individuals who are in it). Accuracy counts a tie among the most likely values as a uniform
guess among them.

Bound: the share 1/l (Anatomy, Mondrian with frequency l-diversity) or beta (ambiguity) that
those releases claim for inferring an individual's value; they claim it against an adversary
who knows no correlation between quasi-identifiers and the attribute, which this one learns.
No other mechanism states a bound on this accuracy.
"""

from __future__ import annotations

import time

import numpy as np

from ppdp.attack.learning import (
    learned_posterior,
    population_posterior,
    release_rows,
    rows_unavailable,
)
from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets, expected_accuracy

NAME = "inference"
ADVERSARY = ("knows each target's quasi-identifiers; learns the attribute from the release's "
             "rows (exact matches of the quasi-identifiers, else naive Bayes)")
SOURCE = ("Kifer, 'Attacks on Privacy and deFinetti's Theorem', SIGMOD 2009, Sections 1 and 5 "
          "(a classifier learnt from the sanitized data predicts the individuals in it)")


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply to this release (None: it applies)."""
    return rows_unavailable(targets.release, targets)


def claimed_bound(release: object) -> float | None:
    """The probability of inferring an individual's value that the release claims, if any."""
    parameters = getattr(release, "parameters", {})
    mechanism = getattr(release, "mechanism", "")
    if mechanism == "anatomy":
        return 1 / int(parameters["l"])
    if mechanism == "ambiguity" and "beta" in parameters:
        return float(parameters["beta"])
    if mechanism == "mondrian" and parameters.get("diversity") == "frequency":
        return 1 / int(parameters["l"])
    return None


def run(targets: Targets) -> list[AttackResult]:
    """Train on the release, predict every source row; accuracy on the targets (half A)
    against the population-trained classifier's."""
    attribute = targets.sensitive
    assert attribute is not None
    baseline_posterior = population_posterior(targets)
    start = time.perf_counter()
    training = release_rows(targets.release, targets)
    sizes, quasi = targets.sizes, targets.quasi
    truth = targets.codes[attribute].astype(np.int64)
    every = {q: targets.codes[q] for q in quasi}
    posterior = learned_posterior(training, every, quasi, sizes, sizes[attribute])
    evaluation = targets.evaluation
    seconds = time.perf_counter() - start
    success = float(expected_accuracy(posterior[evaluation], truth[evaluation]).mean())
    baseline = float(expected_accuracy(baseline_posterior, truth[evaluation]).mean())
    # The best any guess from the quasi-identifiers can do: the source itself as the release.
    identity = learned_posterior((every, truth, None), {q: every[q][evaluation] for q in quasi},
                                 quasi, sizes, sizes[attribute])
    ceiling = float(expected_accuracy(identity, truth[evaluation]).mean())
    return [AttackResult(
        NAME, f"accuracy inferring {attribute} (targets: half of the rows)", success, baseline,
        claimed_bound(targets.release), ADVERSARY, SOURCE, seconds,
        {"gain": success - baseline, "ceiling": ceiling, "targets": len(evaluation),
         "training_rows": len(training[1])},
        posterior[np.arange(len(truth)), truth],
        f"the classifier's probability of the individual's own {attribute}")]

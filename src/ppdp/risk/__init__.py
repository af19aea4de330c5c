"""What a release measurably reveals, against the bounds its mechanism guarantees.

Modules: `disclosure` (the measured presence and association of an ambiguity release, the
k, l and NCP of a Mondrian release, the groups covering a tuple, `ppdp risk`), `measured` (the
privacy each release measurably gives against its table: posteriors of perturbation, the
association of groups, tuple posteriors of alpha-beta and FRAPP, small counts recovered).
"""

from ppdp.risk.disclosure import (
    ambiguity_incidence,
    ambiguity_summary,
    codes_in_release,
    covering_groups,
    release_risk,
    tuple_risk,
)
from ppdp.risk.measured import (
    Measured,
    group_association,
    measured_privacy,
    perturbation_posterior,
    small_count_recovery,
    subtable_counts,
    tuple_posterior,
)

__all__ = ["Measured", "ambiguity_incidence", "ambiguity_summary", "codes_in_release",
           "covering_groups", "group_association", "measured_privacy", "perturbation_posterior",
           "release_risk", "small_count_recovery", "subtable_counts", "tuple_posterior",
           "tuple_risk"]

"""The engines that run mechanisms' plans and count saved releases, one package each, all
implementing `ppdp.plan.engine.Engine` and registered there by name: `memory` (a Table in
memory, the reference), `streaming` (sources read in batches, in bounded memory) and `spark`
(Spark DataFrames). `blocks` holds what the engines share to publish block by block.

Nothing below this package imports it: mechanisms and releases find an engine through
`ppdp.plan.engine`.
"""

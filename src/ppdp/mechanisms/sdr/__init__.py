"""Small domain randomization ("Small Domain Randomization: Same Privacy, More Utility"):
Uniform Perturbation (`uniform`, Sections 3-4) and Perturbation Partitioning (`partition`,
`partitioning`, Section 5), the formulas they share (`formulas`, `compound`), their plan
(`plan`), release and estimator (`release`) and guarantee (`guarantee`)."""

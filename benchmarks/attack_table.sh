#!/usr/bin/env bash
# The table of attacks on Adult in the documentation (docs/how-to/attacks.md): every mechanism
# at the parameters of the command-line examples, seed 1, then every attack that applies to
# each release; one JSON file of results per release. Run from an empty folder, with ppdp on
# the PATH (about a minute on 2 cores).
set -euo pipefail
ppdp publish adult -m uniform -s occupation -p rho1=0.077 -p rho2=0.2 --seed 1 -o adult-uniform
ppdp publish adult -m sdr -s occupation -p rho1=0.077 -p rho2=0.2 --seed 1 -o adult-sdr
ppdp publish adult -m splu -s occupation -p gamma=5 --seed 1 -o adult-splu
ppdp publish adult -m anatomy -s occupation -p l=5 --seed 1 -o adult-anatomy
ppdp publish adult -m dbr -s occupation --seed 1 -o adult-dbr
ppdp publish adult -m ambiguity -s occupation -p alpha=0.1 -p beta=0.2 --seed 1 -o adult-amb
ppdp publish adult -m mondrian -s occupation -p k=10 -p l=5 --hierarchies adult --seed 1 -o adult-gen
ppdp publish adult -m alphabeta -p k=10 -p gamma=0.2 -p v=3 --state-dir state --seed 1 -o view1
ppdp publish adult -m frapp -p k=10 -p gamma=0.2 --seed 1 -o frapp-view
for release in adult-uniform adult-sdr adult-splu adult-anatomy adult-dbr adult-amb adult-gen; do
  ppdp attack $release adult --seed 1 --json -o attack-$release > $release.json
done
for release in view1 frapp-view; do
  ppdp attack $release adult -s occupation --seed 1 --json -o attack-$release > $release.json
done

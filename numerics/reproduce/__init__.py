"""Reproduction of the paper's Table 1 and figures: budgets and cells (:mod:`numerics.reproduce.budgets`), the
sweep (:mod:`numerics.reproduce.experiments`), how a trained cell is judged (:mod:`numerics.reproduce.judge`), the
claims checked on its numbers (:mod:`numerics.reproduce.claims`), the written report
(:mod:`numerics.reproduce.report`), the convergence check (:mod:`numerics.reproduce.convergence`), figures
(:mod:`numerics.reproduce.plots`), the GD++ ridge floor (:mod:`numerics.reproduce.floor`) and the beyond-the-paper
depth study (:mod:`numerics.reproduce.beyond`)."""

from numerics.reproduce.budgets import BUDGETS as BUDGETS
from numerics.reproduce.budgets import PARTS as PARTS
from numerics.reproduce.budgets import Budget as Budget
from numerics.reproduce.budgets import Cell as Cell
from numerics.reproduce.budgets import cell_signature as cell_signature
from numerics.reproduce.budgets import cells_for as cells_for
from numerics.reproduce.budgets import get_budget as get_budget
from numerics.reproduce.budgets import train_config as train_config
from numerics.reproduce.claims import Claim as Claim
from numerics.reproduce.claims import Entry as Entry
from numerics.reproduce.claims import check_claims as check_claims
from numerics.reproduce.experiments import Sweep as Sweep
from numerics.reproduce.experiments import run_cell as run_cell
from numerics.reproduce.experiments import sweep as sweep

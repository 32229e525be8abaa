"""Baselines: ridge-type predictors (ConstRR, AdaRR, TunedRR, GD) and the oracle ridge
(:mod:`numerics.baselines.ridge`), the Bayes-optimal predictor (:mod:`numerics.baselines.bayes`), the spectral form
they share (:mod:`numerics.baselines.spectral`), the sequences and oracle-paired loss every method is scored with
(:mod:`numerics.baselines.scoring`), the exact spectral fit of GD++ (:mod:`numerics.baselines.gdpp_fit`) on importance-sampled
Wishart spectra (:mod:`numerics.baselines.wishart`), and GD++'s floor, ridge at λ = E σ², against which a table of printed
GD++ values is checked (:mod:`numerics.baselines.gdpp_floor`)."""

from numerics.baselines import spectral as spectral
from numerics.baselines import scoring as scoring
from numerics.baselines.spectral import Spectral as Spectral
from numerics.baselines.spectral import ridge as ridge_predictor
from numerics.baselines.ridge import CONST_GRID as CONST_GRID
from numerics.baselines.ridge import FLOOR as FLOOR
from numerics.baselines.ridge import NAMES as NAMES
from numerics.baselines.ridge import OLS_BASED as OLS_BASED
from numerics.baselines.ridge import TUNE_SEQUENCES as TUNE_SEQUENCES
from numerics.baselines.ridge import TUNED as TUNED
from numerics.baselines.ridge import Tuned as Tuned
from numerics.baselines.ridge import check_methods as check_methods
from numerics.baselines.ridge import oracle_weights as oracle_weights
from numerics.baselines.ridge import predictor as predictor
from numerics.baselines.ridge import sigma2_hat as sigma2_hat
from numerics.baselines.ridge import table as table
from numerics.baselines.ridge import tune as tune
from numerics.baselines.ridge import tuned_as_dict as tuned_as_dict
from numerics.baselines import bayes as bayes
from numerics.baselines import gdpp_fit as gdpp_fit
from numerics.baselines import wishart as wishart
from numerics.baselines.ridge import gd_direction as gd_direction
from numerics.baselines.ridge import mean_loss_grid as mean_loss_grid
from numerics.baselines.ridge import tune_const as tune_const
from numerics.baselines.ridge import tune_eta as tune_eta
from numerics.baselines.ridge import tune_tuned as tune_tuned
from numerics.baselines.ridge import tuned_loss_grid as tuned_loss_grid

"""Shared Hypothesis strategies, test data and checks: the one place test modules import helpers from.

* :mod:`.exact`: the exact-rational generator (``rationals``, ``rational_arrays``) and exact FULL problems;
* :mod:`.diag`: exact DIAG parameters and contexts;
* :mod:`.model_params`: float64 model configurations, batches and O(1)-scaled random models;
* :mod:`.family`: random parameters and data of the linear-attention family's members;
* :mod:`.checks`: tolerances (``RTOL64``, ``RTOL32``) and the checks shared by random and trained models.
* :mod:`.hostile`: hostile files (strange archives, tampered zip directories, bad JSON) for the command's tests.

Test modules never import from each other; what two of them share lives here.
"""

from tests.strategies.checks import RTOL32 as RTOL32
from tests.strategies.checks import RTOL64 as RTOL64
from tests.strategies.checks import assert_permutation_invariance as assert_permutation_invariance
from tests.strategies.checks import assert_query_isolation as assert_query_isolation
from tests.strategies.checks import assert_readouts as assert_readouts
from tests.strategies.checks import assert_token_form as assert_token_form
from tests.strategies.checks import gdpp_recursion as gdpp_recursion
from tests.strategies.checks import lemma44_residual as lemma44_residual
from tests.strategies.checks import lintf_forwards as lintf_forwards
from tests.strategies.checks import max_rel_err as max_rel_err
from tests.strategies.checks import omega_form_tokens as omega_form_tokens
from tests.strategies.checks import rotation_change as rotation_change
from tests.strategies.diag import diag_problems as diag_problems
from tests.strategies.family import member_data as member_data
from tests.strategies.family import member_params as member_params
from tests.strategies.exact import Config as Config
from tests.strategies.exact import ExactProblem as ExactProblem
from tests.strategies.exact import configs as configs
from tests.strategies.exact import exact_problems as exact_problems
from tests.strategies.exact import nonzero_rationals as nonzero_rationals
from tests.strategies.exact import rational_arrays as rational_arrays
from tests.strategies.exact import rationals as rationals
from tests.strategies.exact import rationals_in as rationals_in
from tests.strategies.model_params import DEGENERACIES as DEGENERACIES
from tests.strategies.model_params import KINDS as KINDS
from tests.strategies.model_params import TRAINED_D as TRAINED_D
from tests.strategies.model_params import TRAINED_N as TRAINED_N
from tests.strategies.model_params import ModelConfig as ModelConfig
from tests.strategies.model_params import TrainedModel as TrainedModel
from tests.strategies.model_params import config_batch as config_batch
from tests.strategies.model_params import draw_params as draw_params
from tests.strategies.model_params import model_configs as model_configs
from tests.strategies.model_params import property_settings as property_settings
from tests.strategies.model_params import scaled_model as scaled_model
from tests.strategies.model_params import toy_batch as toy_batch

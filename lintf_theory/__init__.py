"""Symbolic derivations (SymPy) of the theory of linear transformers as in-context learners.

Vladymyrov, von Oswald, Sandler, Ge, *Linear Transformers are Versatile In-Context Learners*,
NeurIPS 2024.  The public API is what this module re-exports, plus the shared toolkits:

* :mod:`lintf_theory.symbols`: the names shared by every derivation and the numerics
  (``M, u, a, w``, ``Sigma, alpha, lam``, ``omega_xx, ...``);
* :mod:`lintf_theory.layer`: the layer rule at entry level and at block level;
* :mod:`lintf_theory.matexpr`: exact manipulations of matrix expressions;
* :mod:`lintf_theory.exact`: exact rational test data;
* :mod:`lintf_theory.certify`: certified signs of polynomials on intervals.

Each derivation keeps its own symbols in a named tuple (``GDPP_SYMBOLS.mu``,
``SECOND_ORDER_SYMBOLS.mu``, ...), so two derivations that use the same short name never clash.
"""

from ._attention import attention_inverse_rule as attention_inverse_rule
from ._attention import attention_rule as attention_rule
from ._attention import derive_attention_head as derive_attention_head
from ._attention import derive_attention_inverse as derive_attention_inverse
from ._bridge import State as State
from ._bridge import check_parameters as check_parameters
from ._bridge import export as export
from ._bridge import gram_rule as gram_rule
from ._bridge import gram_update as gram_update
from ._bridge import initial_state as initial_state
from ._bridge import recursion_rule as recursion_rule
from ._bridge import recursion_step as recursion_step
from ._bridge import run_recursion as run_recursion
from ._bridge import split_blocks as split_blocks
from ._closed_forms import derive_one_step_gd as derive_one_step_gd
from ._closed_forms import one_step_rule as one_step_rule
from ._closed_forms import wishart_moments as wishart_moments
from ._closed_forms import ONE_STEP_SYMBOLS as ONE_STEP_SYMBOLS
from ._diagonal import derive_diagonal as derive_diagonal
from ._diagonal import diagonal_rule as diagonal_rule
from ._diagonal import layer_omegas as layer_omegas
from ._diagonal import omega_rule as omega_rule
from ._diagonal import omegas_as_sums as omegas_as_sums
from ._diagonal import one_head_residual as one_head_residual
from ._diagonal import two_head_counterexample as two_head_counterexample
from ._diagonal import head_symbols as head_symbols
from ._family import FAMILY_MEMBERS as FAMILY_MEMBERS
from ._family import FamilyHead as FamilyHead
from ._family import family_forward as family_forward
from ._family import family_gates as family_gates
from ._family import family_layer as family_layer
from ._family import family_paper_form as family_paper_form
from ._family import family_positions as family_positions
from ._family import family_query_matrix as family_query_matrix
from ._family import family_states as family_states
from ._family import family_step as family_step
from ._family import sigmoid as sigmoid
from ._family_closure import SWAP_DECAY as SWAP_DECAY
from ._family_closure import distinct_positions as distinct_positions
from ._family_closure import swap_contexts as swap_contexts
from ._family_gd import WEIGHTED_MEMBERS as WEIGHTED_MEMBERS
from ._family_gd import derive_context_weights as derive_context_weights
from ._family_gd import derive_delta_rule as derive_delta_rule
from ._family_gd import derive_gate_symmetry as derive_gate_symmetry
from ._family_gd import regression_head as regression_head
from ._family_query import decide_query_linearity as decide_query_linearity
from ._family_breaks import derive_query_scale as derive_query_scale
from ._family_breaks import derive_self_reading as derive_self_reading
from ._family_breaks import gate_from_query_counterexample as gate_from_query_counterexample
from ._family_breaks import self_reading_symbols as self_reading_symbols
from ._gdpp import derive_gdpp as derive_gdpp
from ._gdpp import derive_rescaling as derive_rescaling
from ._gdpp import gdpp_covariance_rule as gdpp_covariance_rule
from ._gdpp import gdpp_eigen_rule as gdpp_eigen_rule
from ._gdpp import rescaling_rule as rescaling_rule
from ._gdpp import GDPP_SYMBOLS as GDPP_SYMBOLS
from ._gdpp_floor import degree_law as degree_law
from ._gdpp_floor import derive_pointwise_optimum as derive_pointwise_optimum
from ._gdpp_floor import filter_coefficient_rule as filter_coefficient_rule
from ._gdpp_floor import filter_polynomials as filter_polynomials
from ._gdpp_floor import mean_sigma2 as mean_sigma2
from ._gdpp_floor import ridge_floor_rule as ridge_floor_rule
from ._gdpp_floor import GDPP_FLOOR_SYMBOLS as GDPP_FLOOR_SYMBOLS
from ._gdpp_spectral import derive_gdpp_spectral as derive_gdpp_spectral
from ._gdpp_spectral import gdpp_spectral_loss_rule as gdpp_spectral_loss_rule
from ._gdpp_spectral import gdpp_spectral_residual_rule as gdpp_spectral_residual_rule
from ._gdpp_spectral import gdpp_spectral_rule as gdpp_spectral_rule
from ._gdpp_spectral import GDPP_SPECTRAL_SYMBOLS as GDPP_SPECTRAL_SYMBOLS
from ._lemma44 import derive_alpha_l as derive_alpha_l
from ._lemma44 import derive_lemma44 as derive_lemma44
from ._lemma44 import lemma44_rule as lemma44_rule
from ._lemma44 import alpha_l_rule as alpha_l_rule
from ._no_quadratics import derive_theorem_4_2 as derive_theorem_4_2
from ._no_quadratics import noiseless_weight as noiseless_weight
from ._no_quadratics import THEOREM_4_2_SYMBOLS as THEOREM_4_2_SYMBOLS
from ._recursion import closure_residuals as closure_residuals
from ._recursion import derive_gram_update as derive_gram_update
from ._recursion import derive_recursion as derive_recursion
from ._recursion import token_form_is_closed as token_form_is_closed
from ._render import Statement as Statement
from ._render import render_markdown as render_markdown
from ._render import statements as statements
from ._rescaling import derive_theorem_5_2 as derive_theorem_5_2
from ._rescaling import theorem_5_2_parameters as theorem_5_2_parameters
from ._rescaling import THEOREM_5_2_SYMBOLS as THEOREM_5_2_SYMBOLS
from ._second_order import derive_lemma_a2 as derive_lemma_a2
from ._second_order import derive_lemma_a3 as derive_lemma_a3
from ._second_order import gdpp_eigenvalue_map as gdpp_eigenvalue_map
from ._second_order import kappa_next_rule as kappa_next_rule
from ._second_order import layer_count as layer_count
from ._second_order import layer_count_exact as layer_count_exact
from ._second_order import SECOND_ORDER_SYMBOLS as SECOND_ORDER_SYMBOLS
from ._step_size import derive_step_size as derive_step_size
from ._step_size import exact_prediction_rule as exact_prediction_rule
from ._step_size import step_size_rule as step_size_rule
from ._step_size import OLS_SUMS as OLS_SUMS
from ._step_size import STEP_SIZE_SYMBOLS as STEP_SIZE_SYMBOLS
from ._variants import attention_weights as attention_weights
from ._variants import derive_ffn_break as derive_ffn_break
from ._variants import derive_query_recursion as derive_query_recursion
from ._variants import quadratic_ffn as quadratic_ffn
from ._variants import query_step as query_step
from ._variants import shared_tuple as shared_tuple
from ._variants import weighted_layer_forward as weighted_layer_forward
from ._variants import VARIANT_SYMBOLS as VARIANT_SYMBOLS
from ._variants import square_feature as square_feature
from ._variants import token_G as token_G
from .layer import apply_layer_block as apply_layer_block
from .layer import layer_forward as layer_forward

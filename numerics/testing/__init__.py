r"""The testing kit: check your own implementation of a linear transformer, or of a member of the
linear-attention family, against the theory, in the manner of ``numpy.testing``.

* Theorem 4.1 (:mod:`numerics.testing.theorem`): :func:`assert_follows_theorem_4_1` draws contexts
  and parameters with Hypothesis and reports a shrunk counterexample; :func:`check_theorem_4_1`
  checks one given batch, property by property (:data:`PROPERTIES`: token form, query isolation,
  implicit weight, permutation invariance).
* The family's members (:mod:`numerics.testing.family`, docs/family.md): :func:`check_member`
  checks a member's own implementation against lintf's reference for the same parameters
  (:data:`MEMBER_PROPERTIES`: query isolation, implicit weight, context order).

The code under test is a callable ``forward(X, y, x_query)`` on float64 NumPy arrays that returns
the predictions ``ŷ (B,)`` or every layer's tokens (:mod:`numerics.testing.compare`).  The
references come from the derived recursion through the bridge, never from the code under test.
Needs Hypothesis (``pip install lintf[test]``).
"""

from numerics.testing.family import MEMBER_PROPERTIES as MEMBER_PROPERTIES
from numerics.testing.family import check_context_order as check_context_order
from numerics.testing.family import check_member as check_member
from numerics.testing.family import (
    check_member_implicit_weight as check_member_implicit_weight,
)
from numerics.testing.family import (
    check_member_query_isolation as check_member_query_isolation,
)
from numerics.testing.theorem import PROPERTIES as PROPERTIES
from numerics.testing.theorem import Context as Context
from numerics.testing.theorem import assert_follows_theorem_4_1 as assert_follows_theorem_4_1
from numerics.testing.theorem import check_implicit_weight as check_implicit_weight
from numerics.testing.theorem import check_permutation_invariance as check_permutation_invariance
from numerics.testing.theorem import check_query_isolation as check_query_isolation
from numerics.testing.theorem import check_theorem_4_1 as check_theorem_4_1
from numerics.testing.theorem import check_token_form as check_token_form
from numerics.testing.theorem import contexts as contexts
from numerics.testing.theorem import models as models

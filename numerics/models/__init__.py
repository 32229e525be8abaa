"""The model kinds FULL, DIAG and GD++ (:mod:`numerics.models.kinds`), their forward passes
(:mod:`numerics.models.forward`), the paper's constructions (:mod:`numerics.models.constructions`), conversion
from other code bases' attention weights (:mod:`numerics.models.convert`) and the no-quadratics check
(:mod:`numerics.models.no_quadratics`)."""

from numerics.models.forward import check_data as check_data
from numerics.models.forward import context_gram as context_gram
from numerics.models.forward import forward_tokens as forward_tokens
from numerics.models.forward import predict as predict
from numerics.models.forward import predict_fast as predict_fast
from numerics.models.forward import predict_plain as predict_plain
from numerics.models.forward import readout as readout
from numerics.models.forward import sandwich as sandwich
from numerics.models.forward import tokens as tokens
from numerics.models.kinds import DIAG as DIAG
from numerics.models.kinds import FULL as FULL
from numerics.models.kinds import GDPP as GDPP
from numerics.models.kinds import KIND_OBJECTS as KIND_OBJECTS
from numerics.models.kinds import KINDS as KINDS
from numerics.models.kinds import Diag as Diag
from numerics.models.kinds import Full as Full
from numerics.models.kinds import Gdpp as Gdpp
from numerics.models.kinds import Kind as Kind
from numerics.models.kinds import Params as Params
from numerics.models.kinds import check_kind as check_kind
from numerics.models.kinds import diag_from_universal as diag_from_universal
from numerics.models.kinds import from_universal as from_universal
from numerics.models.kinds import full_g as full_g
from numerics.models.kinds import gdpp_from_universal as gdpp_from_universal
from numerics.models.kinds import init as init
from numerics.models.kinds import kind_of as kind_of
from numerics.models.kinds import omegas as omegas
from numerics.models.kinds import universal as universal
from numerics.models.kinds import upper as upper
from numerics.models import constructions as constructions  # noqa: E402  (after the kinds it uses)
from numerics.models import convert as convert
from numerics.models import no_quadratics as no_quadratics

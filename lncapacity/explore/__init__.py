"""An interactive explorer: one self-contained HTML page of a net at work.

:func:`page` returns the HTML of two Plotly figures (Plotly's JavaScript inlined, so the
file works offline, with no server, and fetches nothing):

- **tour and inspector** (:mod:`.layers`): a Play button and a slider step from the input
  (step 0) through the layers, and each step's title says what it does, in a sentence
  taken from :func:`lncapacity.explain.explain` (:mod:`.tour`: which end the layer folds,
  which runs join, which values merge, how the smallest label gap changes; the readout at
  the last layer).  Every step moves the *ladder* (every point's value at each step, each
  column scaled to its own range, the readout's thresholds at the last column), LayerNorm's
  *circle* after the layer, the layer's *fold map* (value in against value out, its centre,
  fold point and, at the last layer, the readout's thresholds) and, for 2-D data, the
  *plane* (:mod:`.plane`: the whole plane through the net, shaded by the value after the
  step, and the classes after the last).  Hovering a point gives its id (row of the data,
  from 0), label and value; merged points are one marker (:mod:`.panels`).
- **fold playground** (:mod:`.playground`): one fold gadget with sliders for its centre
  ``c``, offset ``beta`` and read ``gamma``, and its map with exact constants.

Everything shown is computed by the library (:mod:`lncapacity.explain`); the page is a
picture, not a proof: the certificate is the proof.  What is drawn is bounded by the net's
size before any work begins (:mod:`lncapacity.plot.budget`): at most ``MAX_POINTS`` points
(a sample beyond, and the page says so), ``MAX_LAYERS`` layers (evenly spaced beyond), a
grid of the plane and a certificate of the points drawn within a fixed budget.  Every user
string (labels, layer kinds, file names) is escaped (:func:`.markup.literal`).

**Modules**, each importing only from those below it (``explore-floors`` in
pyproject.toml): :mod:`.page`; :mod:`.layers` and :mod:`.playground`; :mod:`.panels`,
:mod:`.plane` and :mod:`.tour`; :mod:`.examples` and :mod:`.markup`.

Needs the ``explore`` extra: ``pip install 'lncapacity[explore]'`` (Plotly).
"""

from __future__ import annotations

from .examples import ALTERNATING_POINTS, EXAMPLES, example
from .layers import FRAME_MS
from .markup import literal, require_plotly
from .page import MAX_LAYERS, MAX_POINTS, figures, page
from .playground import PLAYGROUND_PARAMETERS, PLAYGROUND_S, playground_figure

__all__ = [
    "ALTERNATING_POINTS",
    "EXAMPLES",
    "FRAME_MS",
    "MAX_LAYERS",
    "MAX_POINTS",
    "PLAYGROUND_PARAMETERS",
    "PLAYGROUND_S",
    "example",
    "figures",
    "literal",
    "page",
    "playground_figure",
    "require_plotly",
]

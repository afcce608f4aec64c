"""Pictures of a width-3 LN-Net at work: ladders, fold maps, circles, regions, merge trees.

Every function takes a net and labelled points (a :class:`~lncapacity.data.PointSet`,
or ``X, y``) and returns a Matplotlib :class:`~matplotlib.figure.Figure` (made
without pyplot, so nothing global changes).  Values and angles come from the
float64 trace of :mod:`lncapacity.explain` (see its module doc for the scalar
each map reads, the amplitude, the angle on the circle and label runs); they are
pictures, not proofs: the certificate (:func:`lncapacity.certify.certify`) is the
proof, and :func:`regions` marks the points where float64 and the certificate
disagree.

Colours are the Okabe-Ito palette (colour-blind safe) in class order; with more
than 8 classes the colours repeat with another marker, so every (colour, marker)
pair names one class.  Nets deeper than a figure can show are subsampled evenly
(first and last layer always kept), and the title says so.

Needs the ``plot`` extra: ``pip install 'lncapacity[plot]'`` (Matplotlib, NetworkX).

One module per family of pictures: :mod:`.ladders`, :mod:`.folds` (fold
maps), :mod:`.circle_views`, :mod:`.decision` (decision regions), :mod:`.merges`
(merge trees and their graphs) and :mod:`.save` (all at once, for the CLI), with
:mod:`.common` holding the palette, the style and what the pictures share.
:mod:`.budget` bounds what the command draws by the net's size (a sample of large point
sets, grids of the plane sized by the net).
"""

from .circle_views import circles
from .common import MARKERS, OKABE_ITO, class_style, require_matplotlib
from .decision import disagreements as disagreements
from .decision import regions
from .folds import fold_maps
from .ladders import ladder
from .merges import merge_by, merge_graph, merge_tree, write_graphml
from .save import FIGURES, save_figures, skipped_figures

__all__ = [
    "FIGURES",
    "MARKERS",
    "OKABE_ITO",
    "circles",
    "class_style",
    "fold_maps",
    "ladder",
    "merge_by",
    "merge_graph",
    "merge_tree",
    "regions",
    "require_matplotlib",
    "save_figures",
    "skipped_figures",
    "write_graphml",
]

"""lcl from PyTorch: label-similarity curriculum learning in your own loop.

A small, pure-Python package over torch and numpy that computes what the
lcl engine computes, equal to it (the repository's tests hold them
together: ``cmd/lcl/internal/cli/python_package_test.go``):

* targets — :func:`lcl_targets` (LCL's C×C targets of an epoch; epoch 0 is
  v(0)), :class:`LCLTargets` (an epoch-indexed provider), label smoothing,
  MBM's soft labels; or read ``lcl plan``'s files with :func:`load_plan`;
* a target matrix of your own — :func:`load_target_matrix` (the files
  ``--strategy soft --matrix FILE`` reads, with its checks) and
  :class:`SoftTargets` (as given, or annealed to one-hot by LCL's update);
* losses — :func:`soft_target_cross_entropy`, :class:`HXELoss` (MBM's
  hierarchical cross-entropy), :class:`OnlineLabelSmoothing`,
  :class:`HAFrameLoss` with :class:`HAFrame` (the fixed hierarchy-aware
  frame of Liang & Davis), :class:`HAFLoss` with :func:`haf_levels` (HAF's
  level heads and terms, Garg et al.);
* mixing — :func:`mixup`, :func:`cutmix`, :class:`SoftMixer` on soft targets;
* metrics — :func:`mistake_severity`, :func:`hierarchical_distance_at_k`,
  :func:`crm_rank` (conditional risk minimisation),
  :func:`severity_histogram`, :class:`HierarchicalMeter`, from logits and
  an LCA-height matrix (:func:`wordnet_lca_heights`);
* loaders — :func:`load_plan`, :func:`load_matrix`, :func:`load_synsets`,
  with class-order checks that fail in one line naming the file
  (:class:`LCLFileError`).

Example::

    import lcl
    sim = lcl.load_matrix("sim.npy", classes=train_set.classes)  # lcl store export KEY -o sim.npy
    targets = lcl.LCLTargets(sim, epsilon=0.99)
    for epoch in range(epochs):
        for x, y in loader:
            loss = lcl.soft_target_cross_entropy(model(x), targets.rows(y, epoch))
            ...
"""
from __future__ import annotations

from ._errors import LCLFileError
from .haf import HAFLoss, haf_levels
from .haframe import HAFrame, HAFrameLoss, haframe_similarity, single_linkage_distance
from .hierarchy import (Tree, WordNetHierarchy, lca_heights_from_similarity, linkage_tree, wordnet_hierarchy,
                        wordnet_lca_heights)
from .io import ClassInfo, Plan, Synset, check_classes, load_matrix, load_plan, load_synsets, read_classes
from .losses import HXELoss, OnlineLabelSmoothing, soft_target_cross_entropy
from .metrics import (HierarchicalMeter, crm_rank, crm_risk, hierarchical_distance_at_k, hierarchical_metrics,
                      mistake_severity, severity_histogram, top_k_classes)
from .mix import Box, SoftMixer, cutmix, cutmix_box, mix_rows, mixup
from .soft import TARGET_SUM_TOLERANCE, SoftTargets, load_target_matrix, soft_targets
from .targets import (LCLTargets, check_similarity, distance_from_similarity, label_smoothing_targets, lcl_initial,
                      lcl_step, lcl_targets, mbm_soft_labels, one_hot_targets)

__version__ = "0.1.0"

__all__ = [
    "Box",
    "ClassInfo",
    "HAFLoss",
    "HAFrame",
    "HAFrameLoss",
    "HXELoss",
    "HierarchicalMeter",
    "LCLFileError",
    "LCLTargets",
    "OnlineLabelSmoothing",
    "Plan",
    "SoftMixer",
    "SoftTargets",
    "Synset",
    "TARGET_SUM_TOLERANCE",
    "Tree",
    "WordNetHierarchy",
    "check_classes",
    "check_similarity",
    "crm_rank",
    "crm_risk",
    "cutmix",
    "cutmix_box",
    "distance_from_similarity",
    "haf_levels",
    "haframe_similarity",
    "hierarchical_distance_at_k",
    "hierarchical_metrics",
    "label_smoothing_targets",
    "lca_heights_from_similarity",
    "lcl_initial",
    "lcl_step",
    "lcl_targets",
    "linkage_tree",
    "load_matrix",
    "load_plan",
    "load_synsets",
    "load_target_matrix",
    "mbm_soft_labels",
    "mistake_severity",
    "mix_rows",
    "mixup",
    "one_hot_targets",
    "read_classes",
    "severity_histogram",
    "single_linkage_distance",
    "soft_target_cross_entropy",
    "soft_targets",
    "top_k_classes",
    "wordnet_hierarchy",
    "wordnet_lca_heights",
]

// Package trainer is lcl's training engine on libtorch (trainer/torch): the
// loop that trains one or more peer models per stage with soft-target,
// one-hot, distillation and mutual-learning losses as a Planner decides each
// epoch, evaluates top-1/top-5 (and, with a Hierarchy, the hierarchy-aware
// metrics of hier.go) every epoch, logs JSONL metrics and writes
// resumable safetensors checkpoints. Architectures come from
// trainer/models; datasets are consumed through the small interfaces of
// data.go (trainer/data implements them).
package trainer

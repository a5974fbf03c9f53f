// Package curriculum is the contract between a training strategy and the
// trainer, and the bridge that runs a strategy plugin (built-in or
// third-party, plugins/sdk) as the trainer's Planner.
//
// The trainer asks a Planner for the stages of a run and, every epoch (or
// step), for a Plan: float32 soft targets, per-example weights, a subset and
// loss coefficients, indexed by the training data set. A strategy plugin
// sees only the run's training examples (0..n−1, after --fraction) and
// answers in float64; the Bridge maps its answers to data-set indices,
// converts them once, streams features of a finished stage to the plugin
// when a later stage needs them (lazily, so a resumed run's fresh plugin
// gets them again), keeps the first failed Observe to fail the next Plan,
// and names what a resumed run must share (Identity).
package curriculum

// Package strategy holds lcl's built-in training strategies — sl, ls, lcl,
// kd, dml, cn, mbm-soft, ols, hxe and soft — as sdk.Strategy implementations, together with the pure
// Go reference math they rest on: the LCL target update, label smoothing,
// the reference loss formulas (which the libtorch trainer mirrors), and
// CurriculumNet's density clustering. lcl serves these over the plugin
// protocol by re-executing itself, exactly like a third-party plugin.
package strategy

// Package figure draws every figure lcl writes, as PNG with gonum/plot: a
// similarity matrix's clustered dissimilarity heatmap (Dogan et al.,
// Figure 2) and eigenvalue spectrum (their Figure 4), line charts of
// several series (a report's accuracy and entropy curves), stacked panels
// (lcl plan's curriculum) and the critical difference diagram of a rank
// test. Callers choose what to draw; this package only draws it.
package figure

// Command lcl is the label-similarity curriculum learning tool.
package main

func main() {}

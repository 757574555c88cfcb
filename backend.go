package main

// kernelBackend names the numeric backend this binary was built with.
func kernelBackend() string { return "cpu" }

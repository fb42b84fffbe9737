//go:generate go run pkg/codegen/main.go

package main

func main() {}

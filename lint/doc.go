// Package lint holds no code, only tests that enforce the project's rules:
// the import direction of DESIGN.md's package table, no panic outside main
// and tests, and no fmt.Print in libraries.
package lint

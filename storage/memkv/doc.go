// Package memkv is the in-memory reference implementation of storage.KV.
//
// Store keeps a sorted slice of keys, each with its versions in epoch order. It is meant for tests
// and for checking other stores against (the storagetest suite runs on it); nothing survives Close.
package memkv

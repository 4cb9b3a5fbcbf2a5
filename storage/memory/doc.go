// Package memory is the server's one memory budget (--memory-limit): Split
// divides a limit among the Go runtime's soft limit, the store, the pages of
// its table files mapped into the process and the streaming operators' caches;
// a Pool is a byte budget that caches share through Accounts, each evicting
// down to its Allowance; a Budget lists every consumer for
// rw_catalog.rw_memory, holds the ones that do not shrink by themselves to
// their budgets (Hold) and, watching the live heap, shrinks the caches under
// pressure before anything fails. ParseBytes and FormatBytes
// read and write sizes ("2GB", "512MiB"); SystemRAM reads the machine's and
// the cgroup's memory. It sits at the storage floor, importing nothing of
// the project, so every layer can charge it.
package memory

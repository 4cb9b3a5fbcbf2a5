// Package coordinator is the control plane that owns epochs: Coordinator
// serialises writers, commits each write set atomically at a fresh epoch and
// publishes the committed epoch that readers snapshot at. (The streaming issue
// grows it into barrier injection and collection; today DML and DDL commit
// through Commit directly.)
package coordinator

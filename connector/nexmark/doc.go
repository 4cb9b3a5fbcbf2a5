// Package nexmark owns the nexmark connector: the Nexmark event generator
// (Beam / nexmark-rs rules) behind CREATE TABLE ... WITH (connector =
// 'nexmark', nexmark.table.type = 'Person' | 'Auction' | 'Bid', ...). Parse
// checks the options against the table's columns and returns a Config whose
// Fill writes one table's events into columnar chunks. Events are numbered
// 0, 1, 2, ... over all three tables; event e's content is a pure function of
// e (and the event gap), so output does not depend on the split count or
// timing. The types are Config and Column.
package nexmark

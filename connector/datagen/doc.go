// Package datagen owns the datagen connector: it parses a table's
// WITH (connector = 'datagen', ...) options into a Config and generates its
// rows into columnar chunks. Row n (0-based, over the whole source) is a pure
// function of n and the options, so output does not depend on the split
// count or timing. Split i of k owns rows n with n % k == i; its offset is
// the number of its rows already produced (Config.Fill). The types are
// Config and Column.
package datagen

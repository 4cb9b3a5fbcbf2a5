// Package window computes window functions over one partition's rows in
// window order, for the batch Window executor and the streaming OverWindow
// operator alike: ranking (row_number, rank, dense_rank, percent_rank,
// cume_dist, ntile), lag and lead, first_value, last_value and nth_value,
// and aggregates over ROWS, RANGE and GROUPS frames with PostgreSQL's
// semantics. Its one type is Func. AppendGapRows computes the rows GAP_FILL
// adds between two rows of a partition.
package window

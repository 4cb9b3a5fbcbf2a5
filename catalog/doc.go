// Package catalog owns the descriptors of user-visible objects: the database
// "dev", its schemas, and relations (tables, materialized views, views, sinks,
// sources, system tables) with their columns, keys and dependencies. Catalog is
// the in-memory registry guarded by one lock; Reader is the read-only view the
// planner uses. Durability lives in catalog/persist.
package catalog

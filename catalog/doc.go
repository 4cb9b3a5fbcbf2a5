// Package catalog owns the descriptors of user-visible objects: databases
// ("dev" and CREATE DATABASE's, DatabaseDesc), their schemas, and relations
// (tables, materialized views, views, sinks, sources, system tables) with
// their columns, keys and dependencies. Catalog is the in-memory registry
// guarded by one lock; Reader is the read-only view the planner uses, Path the
// same seen from a session's database and search_path. A stored
// definition's Refs pin what its names meant (relation id, columns by
// position), so renames and added or dropped columns leave it alone.
// Function is a user SQL function (CREATE FUNCTION), read by the binder
// through FunctionReader. Durability lives in catalog/persist.
package catalog

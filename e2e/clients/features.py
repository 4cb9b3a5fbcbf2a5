"""Issue 17's client features through psycopg2: transaction blocks (COMMIT,
ROLLBACK, savepoints, a failed block), psycopg2's own implicit transactions
and `with conn:`, a serialization failure retried, COPY FROM STDIN / TO
STDOUT in CSV and text (copy_expert), uuid and serial columns, typed
parameters and PREPARE/EXECUTE, INSERT ... ON CONFLICT DO UPDATE, and
errors' SQLSTATEs.

stdin: {host, port, user, database}; stdout: a JSON object of results
(e2e/clients_features_test.go holds what each must be).
"""
import datetime
import decimal
import io
import json
import re
import sys

import psycopg2
import psycopg2.errors
import psycopg2.extensions


def code_of(cur, sql, args=None):
    """Runs a statement that must fail and returns its SQLSTATE."""
    try:
        cur.execute(sql, args)
    except psycopg2.Error as e:
        return e.pgcode
    return "no error"


def ids(cur, table):
    cur.execute("SELECT id FROM %s ORDER BY id" % table)
    return [r[0] for r in cur.fetchall()]


def count(cur, table):
    cur.execute("SELECT count(*) FROM %s" % table)
    return cur.fetchone()[0]


def main():
    c = json.load(sys.stdin)

    def connect():
        return psycopg2.connect(host=c["host"], port=c["port"], user=c["user"], dbname=c["database"],
                                sslmode="disable", connect_timeout=10)

    conn, other_conn = connect(), connect()
    conn.autocommit = True
    other_conn.autocommit = True
    out = {}
    try:
        cur, other = conn.cursor(), other_conn.cursor()

        # Transaction blocks, spelled out.
        cur.execute("CREATE TABLE py_t (id int PRIMARY KEY, v text)")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO py_t VALUES (1, 'a')")
        cur.execute("INSERT INTO py_t VALUES (2, 'b')")
        unseen = count(other, "py_t")
        cur.execute("COMMIT")
        out["commit"] = {"seen_by_other_before": unseen, "after": ids(other, "py_t")}

        cur.execute("BEGIN")
        cur.execute("INSERT INTO py_t VALUES (3, 'c')")
        inside = count(cur, "py_t")
        cur.execute("ROLLBACK")
        out["rollback"] = {"inside": inside, "after": ids(cur, "py_t")}

        cur.execute("BEGIN")
        cur.execute("INSERT INTO py_t VALUES (10, 'kept')")
        cur.execute("SAVEPOINT a")
        cur.execute("INSERT INTO py_t VALUES (11, 'dropped')")
        cur.execute("ROLLBACK TO SAVEPOINT a")
        cur.execute("INSERT INTO py_t VALUES (12, 'kept')")
        cur.execute("RELEASE SAVEPOINT a")
        cur.execute("COMMIT")
        out["savepoint"] = ids(cur, "py_t")

        cur.execute("BEGIN")
        cur.execute("INSERT INTO py_t VALUES (20, 'lost')")
        codes = [code_of(cur, "SELECT 1 / 0"), code_of(cur, "SELECT 1")]
        cur.execute("ROLLBACK")
        cur.execute("SELECT 1")
        out["aborted"] = {"codes": codes, "usable": cur.fetchone()[0], "after": ids(cur, "py_t")}

        # psycopg2's default: every statement opens a block (BEGIN is sent
        # before the first), commit() or rollback() ends it; `with conn:`
        # commits when the body returns and rolls back when it raises.
        conn.autocommit = False
        cur.execute("INSERT INTO py_t VALUES (30, 'implicit')")
        status_in = conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INTRANS
        unseen = count(other, "py_t WHERE id = 30")
        conn.rollback()
        after_rollback = count(other, "py_t WHERE id = 30")
        cur.execute("INSERT INTO py_t VALUES (31, 'implicit')")
        conn.commit()
        after_commit = count(other, "py_t WHERE id = 31")
        with conn:
            cur.execute("INSERT INTO py_t VALUES (32, 'with')")
        with_committed = count(other, "py_t WHERE id = 32")
        try:
            with conn:
                cur.execute("INSERT INTO py_t VALUES (33, 'with')")
                cur.execute("INSERT INTO py_t VALUES (1, 'duplicate')")
        except psycopg2.errors.UniqueViolation as e:
            with_error = e.pgcode
        else:
            with_error = "no error"
        idle = conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE
        with_rolled_back = count(other, "py_t WHERE id = 33")
        conn.rollback()
        conn.autocommit = True
        out["implicit"] = {
            "in_transaction": status_in, "seen_by_other_before": unseen, "after_rollback": after_rollback,
            "after_commit": after_commit, "with_committed": with_committed, "with_error": with_error,
            "idle_after_with": idle, "with_rolled_back": with_rolled_back,
        }

        # A lost update refused with 40001 and retried, in psycopg2's own
        # transactions: the block reads a balance and writes it back plus
        # 10; on the first attempt another session adds 100 in between, so
        # the first committer wins and this block must run again.
        cur.execute("CREATE TABLE py_acct (id int PRIMARY KEY, bal int)")
        cur.execute("INSERT INTO py_acct VALUES (1, 0)")
        conn.autocommit = False
        conn.set_session(isolation_level=psycopg2.extensions.ISOLATION_LEVEL_REPEATABLE_READ)
        errors, attempts = [], 0
        while True:
            attempts += 1
            try:
                cur.execute("SELECT bal FROM py_acct WHERE id = 1")
                bal = cur.fetchone()[0]
                if attempts == 1:
                    other.execute("UPDATE py_acct SET bal = bal + 100 WHERE id = 1")
                cur.execute("UPDATE py_acct SET bal = %s WHERE id = 1", (bal + 10,))
                conn.commit()
                break
            except psycopg2.errors.SerializationFailure as e:
                conn.rollback()
                if attempts >= 5:
                    raise
                errors.append(e.pgcode)
        conn.set_session(isolation_level=psycopg2.extensions.ISOLATION_LEVEL_DEFAULT)
        conn.autocommit = True
        cur.execute("SELECT bal FROM py_acct WHERE id = 1")
        out["serialization"] = {"errors": errors, "attempts": attempts, "balance": cur.fetchone()[0]}

        # COPY through copy_expert.
        cur.execute("CREATE TABLE py_cp (id int PRIMARY KEY, name text, note text)")
        cur.copy_expert("COPY py_cp FROM STDIN WITH (FORMAT csv, HEADER true)",
                        io.StringIO('id,name,note\n1,"a, b",\n2,"say ""hi""",""\n3,"two\nlines",plain\n'))
        in_csv = cur.rowcount
        cur.copy_expert("COPY py_cp (id, name, note) FROM STDIN", io.StringIO("4\ttab\\there\t\\N\n5\tback\\\\slash\t\n"))
        in_text = cur.rowcount
        cur.execute("SELECT id, name, note FROM py_cp ORDER BY id")
        rows = [{"id": r[0], "name": r[1], "note": r[2]} for r in cur.fetchall()]
        csv_out, text_out = io.StringIO(), io.StringIO()
        cur.copy_expert("COPY (SELECT * FROM py_cp ORDER BY id) TO STDOUT WITH (FORMAT csv)", csv_out)
        cur.copy_expert("COPY (SELECT * FROM py_cp ORDER BY id) TO STDOUT", text_out)
        out["copy"] = {"in_csv": in_csv, "in_text": in_text, "rows": rows, "out_csv": csv_out.getvalue(),
                       "out_text": text_out.getvalue(), "usable": count(cur, "py_cp")}

        # uuid and serial columns (psycopg2 reads uuid as str unless
        # register_uuid() is called; the parameters are str as well).
        shape = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        cur.execute("CREATE TABLE py_u (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int)")
        cur.execute("INSERT INTO py_u (n) VALUES (1), (2) RETURNING id")
        gen = [r[0] for r in cur.fetchall()]
        cur.execute("INSERT INTO py_u VALUES (%s, %s)", ("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", 3))
        uuid = {"generated_shape": all(isinstance(u, str) and shape.match(u) is not None for u in gen),
                "generated_distinct": len(gen) == 2 and gen[0] != gen[1]}
        cur.execute("SELECT n FROM py_u WHERE id = %s", (gen[1],))
        uuid["by_generated"] = cur.fetchone()[0]
        cur.execute("SELECT id FROM py_u WHERE n = 3")
        uuid["explicit"] = cur.fetchone()[0]
        cur.execute("SELECT n FROM py_u WHERE id = %s::uuid", ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",))
        uuid["by_param"] = cur.fetchone()[0]
        cur.execute("SELECT gen_random_uuid()")
        uuid["function_shape"] = shape.match(cur.fetchone()[0]) is not None
        out["uuid"] = uuid
        cur.execute("CREATE TABLE py_s (id serial PRIMARY KEY, big bigserial, v text)")
        cur.execute("INSERT INTO py_s (v) VALUES ('a'), ('b') RETURNING id, big, v")
        serial = cur.fetchall()
        cur.execute("INSERT INTO py_s (v) VALUES (%s) RETURNING id, big, v", ("c",))
        serial += cur.fetchall()
        # As node-postgres reads int8: a string.
        out["serial"] = [{"id": r[0], "big": str(r[1]), "v": r[2]} for r in serial]

        # Typed parameters, PREPARE/EXECUTE, ON CONFLICT DO UPDATE.
        cur.execute("CREATE TABLE py_k (id int PRIMARY KEY, amount numeric, at timestamptz, ok bool, note text)")
        at = datetime.datetime(2024, 3, 1, 12, 34, 56, 789000, tzinfo=datetime.timezone.utc)
        day = datetime.timedelta(days=1)
        cur.execute("INSERT INTO py_k VALUES (%s, %s, %s, %s, %s), (%s, %s, %s, %s, %s)",
                    (1, decimal.Decimal("12.50"), at, True, None, 2, decimal.Decimal("-0.001"), at + day, False, "two"))
        cur.execute("PREPARE py_k_find (numeric, timestamptz, bool, text) AS "
                    "SELECT id FROM py_k WHERE amount > $1 AND at < $2 AND ok = $3 AND ($4 IS NULL OR note = $4) ORDER BY id")
        found = []
        for args in [(decimal.Decimal(0), at + datetime.timedelta(milliseconds=1), True, None),
                     (decimal.Decimal(-1), at + 2 * day, False, "two")]:
            cur.execute("EXECUTE py_k_find (%s, %s, %s, %s)", args)
            found.append([r[0] for r in cur.fetchall()])
        cur.execute("DEALLOCATE py_k_find")
        cur.execute("SELECT id, amount, at, ok, note FROM py_k WHERE id = %s", (1,))
        r = cur.fetchone()
        row = {"id": r[0], "amount": str(r[1]), "at_ms": round(r[2].timestamp() * 1000), "ok": r[3], "note": r[4]}
        upsert = ("INSERT INTO py_k (id, amount, note) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                  "SET amount = py_k.amount + EXCLUDED.amount, note = EXCLUDED.note RETURNING id, amount, note")
        upserted = []
        for args in [(1, decimal.Decimal("0.5"), "updated"), (3, decimal.Decimal(7), "inserted")]:
            cur.execute(upsert, args)
            u = cur.fetchone()
            upserted.append({"id": u[0], "amount": str(u[1]), "note": u[2]})
        cur.execute("SELECT id, amount::text, note FROM py_k ORDER BY id")
        after = [{"id": a[0], "amount": a[1], "note": a[2]} for a in cur.fetchall()]
        out["params"] = {"row": row, "found": found, "upsert": upserted, "after": after}

        # Errors carry their SQLSTATE (and psycopg2's class for it) and
        # leave the session usable.
        try:
            cur.execute("SELECT * FROM py_nope")
            missing = {}
        except psycopg2.errors.UndefinedTable as e:
            missing = {"code": e.pgcode, "message": e.diag.message_primary}
        out["errors"] = {
            "unique": code_of(cur, "INSERT INTO py_k (id, note) VALUES (%s, 'dup')", (2,)),
            "division": code_of(cur, "SELECT %s::int / %s::int", (1, 0)),
            "missing": missing,
            "usable": count(cur, "py_k"),
        }
        json.dump(out, sys.stdout)
    finally:
        other_conn.close()
        conn.close()


if __name__ == "__main__":
    main()

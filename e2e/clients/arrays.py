"""Arrays through psycopg2: list parameters (sent as ARRAY[...] literals),
array columns read back as lists, = ANY(%s), array_agg and unnest.

stdin: {host, port, user, database}; stdout: a JSON object of results.
"""
import json
import sys

import psycopg2


def main():
    c = json.load(sys.stdin)
    conn = psycopg2.connect(host=c["host"], port=c["port"], user=c["user"], dbname=c["database"],
                            sslmode="disable", connect_timeout=10)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE py_arr (id int PRIMARY KEY, nums int[], tags text[])")
            cur.execute("INSERT INTO py_arr VALUES (%s, %s, %s), (%s, %s::int[], %s)",
                        (1, [1, 2, None], ["a", "b c", '"q"'], 2, [], ["NULL", ""]))
            cur.execute("SELECT id, nums, tags FROM py_arr ORDER BY id")
            rows = [{"id": r[0], "nums": r[1], "tags": r[2]} for r in cur.fetchall()]
            cur.execute("SELECT id FROM py_arr WHERE %s = ANY(tags) OR id = ANY(%s) ORDER BY id", ("b c", [2]))
            any_ids = [r[0] for r in cur.fetchall()]
            cur.execute("SELECT array_agg(id ORDER BY id DESC) FROM py_arr")
            agg = cur.fetchone()[0]
            cur.execute("SELECT x FROM py_arr, unnest(py_arr.nums) AS x WHERE id = 1 ORDER BY x")
            unnested = [r[0] for r in cur.fetchall()]
        json.dump({"rows": rows, "any": any_ids, "agg": agg, "unnested": unnested}, sys.stdout)
    finally:
        conn.close()


if __name__ == "__main__":
    main()

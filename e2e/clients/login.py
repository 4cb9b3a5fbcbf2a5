"""Logs in with psycopg2 once per case and reports what happened.

stdin: a JSON array of {host, port, user, password, database, ssl: null |
"require" | {ca: path}}; stdout: a JSON array of {user, tls} (current_user
after a login) or {error, code}.
"""
import json
import sys

import psycopg2


def attempt(c):
    kw = dict(host=c["host"], port=c["port"], user=c["user"], dbname=c["database"], connect_timeout=10)
    if c.get("password") is not None:
        kw["password"] = c["password"]
    ssl = c.get("ssl")
    if ssl == "require":
        kw["sslmode"] = "require"
    elif isinstance(ssl, dict):
        kw.update(sslmode="verify-full", sslrootcert=ssl["ca"])
    else:
        kw["sslmode"] = "disable"
    try:
        conn = psycopg2.connect(**kw)
    except psycopg2.Error as e:
        return {"error": str(e), "code": e.pgcode or ""}
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT current_user")
            user = cur.fetchone()[0]
        tls = bool(conn.info.ssl_in_use)
        return {"user": user, "tls": tls}
    finally:
        conn.close()


def main():
    cases = json.load(sys.stdin)
    json.dump([attempt(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()

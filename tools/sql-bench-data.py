#!/usr/bin/env python3
"""Writes the CSV file `measure_overhead` (host/analytics/tests/private_sql.rs) times:
columns device,g,x; ROWS rows, 10 per privacy unit (device d0, d1, ...), each unit's key
g(u mod 1000) (the 1 000 public keys g0..g999), and x uniform in [-5, 105] with two
decimals (some values fall outside the bounds 0:100 and are clamped). Each unit's rows
are spread over the file (row i belongs to unit i mod ROWS/10), so an engine cannot rely
on a unit's rows arriving together; --shuffle instead shuffles the rows in memory (the
layout of the 10^6-row file the book's "Columnar unit states" table was measured on).

  tools/sql-bench-data.py ROWS OUT.csv [--seed S] [--shuffle]

Then: PRIVQ_SQL_BENCH=OUT.csv [PRIVQ_SQL_BENCH_MAX_ROWS=3] <private_sql test binary>
--ignored --nocapture measure (see docs/src/private-statistics.md, "Cost").
"""
import argparse
import os
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", type=int, help="rows to write (a multiple of 10, at least 10)")
    ap.add_argument("out", help="the CSV file to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shuffle", action="store_true",
                    help="shuffle the rows in memory (about 100 bytes a row)")
    a = ap.parse_args()
    if a.rows < 10 or a.rows % 10:
        sys.exit(f"sql-bench-data: {a.rows} rows: give a multiple of 10, at least 10")
    units = a.rows // 10
    rng = random.Random(a.seed)

    def row(i):
        u = i % units
        return f"d{u},g{u % 1000},{rng.uniform(-5, 105):.2f}\n"

    tmp = a.out + ".part"
    with open(tmp, "w") as f:
        f.write("device,g,x\n")
        if a.shuffle:
            rows = [row(i) for i in range(a.rows)]
            rng.shuffle(rows)
            f.writelines(rows)
        else:
            for i in range(a.rows):
                f.write(row(i))
    os.replace(tmp, a.out)
    print(f"sql-bench-data: wrote {a.rows} rows, {units} units, to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The newcomer walk-through: the bad inputs and surprising defaults a first-time
# user of `privq` met, run against the current binary, as a Markdown table of
# what happens now (exit code and the first line privq prints on stderr).
#
#   tools/walkthrough.sh                  # builds target/release/privq first
#   PRIVQ=target/debug/privq tools/walkthrough.sh
#
# Run from the repository root, with ../shared/data beside it.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ -z "${PRIVQ:-}" ]]; then
    cargo build --release -q -p privq --bin privq || exit 1
    PRIVQ="$root/target/release/privq"
fi
data="$root/../shared/data"
[[ -f "$data/nltcs.csv" ]] || { echo "walkthrough: $data/nltcs.csv is missing" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "| what was tried | exit | what privq says now (first line of stderr, or stdout) |"
echo "|---|---|---|"
row() { # row DESCRIPTION CMD...   (MATCH=regex picks the stderr line to show)
    local what=$1
    shift
    local out err rc
    out=$("$@" 2>err.txt | tr -d '\0')
    rc=${PIPESTATUS[0]}
    err=$(grep -v -e '--seed .* makes' -e '^$' err.txt | grep -E -e "${MATCH:-.}" | head -1)
    [[ -z "$err" ]] && err="(stdout) $(printf '%s' "$out" | head -1)"
    err=${err//|/\\|}
    err=${err//</\&lt;}
    err=${err//>/\&gt;}
    printf '| %s | %s | %s |\n' "$what" "$rc" "${err:0:160}"
}

q=$PRIVQ
$q ldp simulate --mechanism grr --epsilon 1 --domain 64 --devices 2000 --seed 7 \
    --output a.pqr --campaign campaign.json 2>/dev/null
$q ldp simulate --mechanism olh --epsilon 1 --domain 64 --devices 2000 --seed 7 \
    --output olh.pqr --campaign olh.json 2>/dev/null
python3 - <<'PY'
import struct
a = open("a.pqr", "rb").read()
open("crafted.pqr", "wb").write(a + bytes([16, 0]) + struct.pack("<BBHHHII", 1, 2, 0, 1, 1, 2147483646, 0))
o = bytearray(open("olh.pqr", "rb").read()); o[18] = 0x7F; open("olh-7f.pqr", "wb").write(o)
o = bytearray(open("olh.pqr", "rb").read()); o[17] = 0x01; open("olh-17.pqr", "wb").write(o)
c = bytearray(a); c[5] ^= 0x40; c[5 + 40] ^= 0x40; open("lengths.pqr", "wb").write(c)
open("twice.pqr", "wb").write(a + a)
open("trunc.pqr", "wb").write(a[:7])
open("empty.pqr", "wb").write(b"")
PY
agg() { $q ldp aggregate --campaign "$@"; }
row "crafted 18-byte GRR frame appended" agg campaign.json --input crafted.pqr
row "OLH report, byte 18 set to 0x7f" agg olh.json --input olh-7f.pqr
row "OLH report, byte 17 set to 0x01" agg olh.json --input olh-17.pqr
row "two report files concatenated" agg campaign.json --input twice.pqr
row "two corrupted length bytes" agg campaign.json --input lengths.pqr
row "empty report file" agg campaign.json --input empty.pqr
row "truncated report file" agg campaign.json --input trunc.pqr
row "aggregate at epsilon = 710" $q ldp aggregate --mechanism grr --epsilon 710 --domain 64 --input a.pqr
echo keep > kept.pqr
row "ldp simulate failing onto an existing file" $q ldp simulate --mechanism oue --epsilon 0 --domain 8 --devices 10 --output kept.pqr
printf '| &nbsp;&nbsp;… the existing file afterwards | | %s |\n' "$(cat kept.pqr)"
row "ldp simulate --output -" $q ldp simulate --mechanism grr --epsilon 1 --domain 4 --devices 3 --seed 1 --output -
row "ldp simulate of 10^5 OUE reports over 10^5 items" $q ldp simulate --mechanism oue --epsilon 1 --domain 100000 --devices 100000 --output big.pqr
row "experiment mwem without the datasets" $q experiment mwem --data-dir nowhere --quick
row "experiment mwem --runs 0" $q experiment mwem --runs 0
row "experiment mwem --out-dir /proc/x" $q experiment mwem --quick --out-dir /proc/x --data-dir "$data"
printf 'x,y\n0.1,0.2\n' > pts.csv
row "distance query with a missing synopsis" $q distance query --synopsis none.json --input pts.csv
row "noise --demo --seed 7 (README)" $q noise --demo --epsilon 0.5 --range 15,30 --seed 7
MATCH=warning row "noise at epsilon = 1e-9" $q noise --demo --epsilon 0.000000001 --range 15,30 --seed 7
MATCH=answered row "pmw with its defaults on NLTCS" bash -c "printf 'count a1=1 a2=1\ncount a3=0 a4=1\n' | $q pmw --input $data/nltcs.csv --domain binary --epsilon 1 --rounds 2 --seed 3"
printf 'count a1=1 a2=1\n' > q.txt
row "pmw --help's profile example on NLTCS" $q pmw --input "$data/nltcs.csv" --domain binary --epsilon 1 --rounds 1000 --queries q.txt --pure --eta 0.5 --sigma 0.01 --threshold 0.05 --max-updates 50 --update project --seed 1
python3 -c "print('colour,size'); [print(f'{c},{s}') for c in ('red','green','blue') for s in ('s','m') for _ in range(400)]" > people.csv
MATCH=error row "synth's default workload on non-binary data" $q synth --input people.csv --discover-domain --epsilon 1 --seed 1
row "distance release --alpha 1e-9" $q distance release --input pts.csv --lo 0,0 --hi 1,1 --epsilon 1 --alpha 0.000000001 --out syn.json
printf 'x,n\n0,10\n1,5\n3,7\n' > u.csv
row "dx --metric bogus" $q dx --universe u.csv --coords x --counts n --query-column n --epsilon 1 --metric bogus
MATCH=epsilon row "dx without --epsilon" $q dx --universe u.csv --coords x --counts n --query-column n
printf 'a,b\n\xff\xfe,1\n' > bad.csv
row "a CSV that is not UTF-8" $q synth --input bad.csv --domain binary --epsilon 1
row "a missing input file" $q synth --input missing.csv --domain binary --epsilon 1
row "synth piped into head -1" bash -c "$q synth --input $data/czech.csv --count-column count --domain binary --epsilon 1 --seed 1 | head -1 >/dev/null; exit \${PIPESTATUS[0]}"
row "noise --format json" $q noise --demo --epsilon 1 --range 15,30 --seed 7 --format json
row "ledger as JSON on stdout (--ledger-json -)" $q noise --demo --epsilon 1 --range 15,30 --ledger-json -

# The first-hour findings: inputs that silently meant something else, crashes and
# false refusals, misleading messages.
python3 -c "print('sex,count'); [print(f'{i % 2},{500 if i == 0 else i % 7}') for i in range(1000)]" > visits.csv
printf '{"attributes": [{"name": "sex", "values": ["0", "1"]}]}' > sex.json
row "a column named count, not declared" $q synth --input visits.csv --domain sex.json --epsilon 1 --seed 1
MATCH=synthetic row "… declared as a weight (--count-column count)" $q synth --input visits.csv --domain sex.json --count-column count --epsilon 1 --seed 1 --output w.csv
python3 -c "print('income'); [print('NaN' if i % 5 == 0 else i % 40) for i in range(2000)]" > income.csv
printf '{"attributes": [{"name": "income", "edges": [0, 10, 20, 40]}]}' > income.json
row "NaN in a binned column" $q synth --input income.csv --domain income.json --epsilon 1 --seed 1
python3 -c "print('sex,age'); [print(f'{i % 2},{i % 90}') for i in range(500)]" > two.csv
row "a domain that lists fewer columns than the CSV" $q synth --input two.csv --domain sex.json --epsilon 1 --seed 1
cp two.csv x.csv
row "--output equal to --input" $q synth --input x.csv --domain sex.json --ignore-columns age --epsilon 1 --output x.csv
row "--ledger-json to an unwritable path (synth)" $q synth --input two.csv --domain sex.json --ignore-columns age --epsilon 1 --output o.csv --ledger-json /sys/l.json
printf '| &nbsp;&nbsp;… o.csv afterwards | | %s |\n' "$([[ -e o.csv ]] && echo exists || echo "absent")"
row "--ledger-json to an unwritable path (noise)" $q noise --demo --epsilon 1 --range 15,30 --ledger-json /sys/l.json
python3 -c "print(','.join(f'b{i}' for i in range(64))); [print(','.join(str((r * 2654435761 >> i) & 1) for i in range(64))) for r in range(400)]" > wide.csv
MATCH=adaptive row "synth --domain binary on 64 binary columns" $q synth --input wide.csv --domain binary --epsilon 1 --seed 1 --workload marginals:2 --rounds 70 --output wide-out.csv
row "synth --records 1000000000000" $q synth --input two.csv --domain sex.json --ignore-columns age --epsilon 1 --records 1000000000000 --output big.csv
row "pmw with no query" $q pmw --input "$data/nltcs.csv" --domain binary --epsilon 1 --rounds 2 --pure --queries /dev/null
row "ldp export in a build without the feature" $q ldp export --input a.pqr --out t/
MATCH=TODO row "domain init (header only)" $q domain init two.csv --numeric age --output tmpl.json
row "synth on the unfilled template" $q synth --input two.csv --domain tmpl.json --epsilon 1
MATCH=discovered row "domain discover (charged)" $q domain discover --input two.csv --ignore-columns age --epsilon 0.5 --seed 1 --output found.json
printf 'a,a,b\n1,2,x\n' > dup.csv
row "a column the header names twice" $q noise --input dup.csv --column a --range 0,10 --epsilon 1
printf 'income\n12\nabc\n' > word.csv
row "text in a binned column" $q synth --input word.csv --domain income.json --epsilon 1
MATCH=protects row "noise at epsilon = 100" $q noise --demo --epsilon 100 --range 15,30 --seed 7

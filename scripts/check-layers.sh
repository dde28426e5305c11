#!/bin/sh
# check-layers.sh - every #include "..." in CSources/ goes down (or across
# within one folder) the order written in CSources/LAYERS.
#
#   scripts/check-layers.sh           check; name each upward include
#   scripts/check-layers.sh --graph   print the folder graph as it is
#
# A quoted include "dir/file.h" belongs to folder dir; "hearth.h" to
# include/; any other bare name to the including file's own folder.
set -eu
cd "$(dirname "$0")/.."

# folder:file:line:target-folder for each quoted include between folders.
edges() {
    for f in CSources/*/*.c CSources/*/*.h; do
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" /dev/null || :
    done | awk -F: '{
        split($1, p, "/"); from = p[2]
        match($0, /"[^"]*"/); inc = substr($0, RSTART + 1, RLENGTH - 2)
        if (inc == "hearth.h") to = "include"
        else if (index(inc, "/")) { split(inc, q, "/"); to = q[1] }
        else to = from
        if (to != from) printf "%s:%s:%s:%s\n", from, $1, $2, to
    }'
}

if [ "${1:-}" = --graph ]; then
    edges | awk -F: '{ print $1 " -> " $4 }' | sort -u
    exit 0
fi

# "folder rank" per folder: rank is the line of CSources/LAYERS it is on.
ranks() {
    sed 's/#.*//' CSources/LAYERS | awk 'NF { n++; for (i = 1; i <= NF; i++) print $i, n }'
}

status=0
for d in CSources/*/; do
    d=${d%/}; d=${d#CSources/}
    if ! ranks | grep -q "^$d "; then
        echo "check-layers: CSources/$d/ is not in CSources/LAYERS; place it there" >&2
        status=1
    fi
done

bad=$( (ranks; echo; edges) | awk '
    !edges && NF == 0 { edges = 1; next }
    !edges { rank[$1] = $2; next }
    {
        split($0, e, ":"); from = e[1]; to = e[4]
        if (!(to in rank))
            printf "%s:%s: includes %s/, which is not a layer\n", e[2], e[3], to
        else if ((from in rank) && rank[to] >= rank[from])
            printf "%s:%s: %s/ includes %s/, which is %s it in CSources/LAYERS\n",
                   e[2], e[3], from, to, rank[to] == rank[from] ? "beside" : "above"
    }')
if [ -n "$bad" ]; then
    printf '%s\n' "$bad" | sed 's/^/check-layers: /' >&2
    status=1
fi
# The server asks its keeper (server/keeper.h) where namespaces are kept;
# only the cluster's keeper knows the cluster.
cluster_users=$(grep -ln '#[[:space:]]*include[[:space:]]*"cluster/' \
                CSources/server/*.[ch] | grep -v '^CSources/server/keeper_cluster\.c$' || :)
if [ -n "$cluster_users" ]; then
    printf 'check-layers: %s includes cluster/; ask the keeper (server/keeper.h)\n' \
           $cluster_users >&2
    status=1
fi
[ $status = 0 ] && echo "check-layers: every include goes down CSources/LAYERS"
exit $status

#!/usr/bin/env python3
"""scripts/throwaway-postgres.sh from a checkout the `postgres` user cannot enter.

As root (CI, many containers), the throwaway clusters' servers run as Debian's `postgres` user: a checkout cloned
into a private directory (`mktemp -d`, /root/...: mode 0700) is closed to it, and `initdb` under the checkout's .build
fails with "Permission denied". The helpers must put the cluster where its owner can reach it. Here the helper
script is copied into such a directory and run from there, asking for its cluster there too; the cluster must start,
answer a query, and leave nothing behind once cleaned up. (Not as root: the server runs as the caller, who owns the
directory, and the cluster stays where it was asked to be.) Run by `make test` with the other scripts/test_*.py.
"""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


@unittest.skipUnless(PG_BIN, "no PostgreSQL server installed (scripts/install-deps.sh)")
class ThrowawayPostgresFromAPrivateCheckout(unittest.TestCase):
    def setUp(self):
        self.private = tempfile.mkdtemp(prefix="receipts-private-checkout-")
        os.chmod(self.private, 0o700)
        os.makedirs(os.path.join(self.private, "scripts"))
        shutil.copy(os.path.join(ROOT, "scripts", "throwaway-postgres.sh"), os.path.join(self.private, "scripts"))

    def tearDown(self):
        shutil.rmtree(self.private, ignore_errors=True)

    def test_a_cluster_asked_for_under_a_private_checkout_starts_where_postgres_can_reach_it(self):
        psql = os.path.join(os.path.dirname(PG_BIN[-1]), "psql")
        script = f"""
            set -euo pipefail
            cd "{self.private}"
            . scripts/throwaway-postgres.sh
            pids=()
            trap 'for pid in "${{pids[@]}}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait; postgres_cluster_cleanup' EXIT
            start_throwaway_postgres "$PWD/.build/check/postgres" "$PWD/.build/check/postgres.log"
            "{psql}" -X -q -t -A -d "$POSTGRES_URL" -c "SELECT 40 + 2"
            echo "cluster=$POSTGRES_CLUSTER_DIR"
        """
        os.makedirs(os.path.join(self.private, ".build", "check"))
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("42", out.stdout.splitlines())
        cluster = next(line.split("=", 1)[1] for line in out.stdout.splitlines() if line.startswith("cluster="))
        if os.geteuid() == 0:
            self.assertFalse(cluster.startswith(self.private), f"the cluster stayed in {cluster}")
            self.assertFalse(os.path.exists(cluster), f"{cluster} was not removed by postgres_cluster_cleanup")
        else:
            self.assertTrue(cluster.startswith(self.private), f"the cluster moved to {cluster}")


if __name__ == "__main__":
    unittest.main()

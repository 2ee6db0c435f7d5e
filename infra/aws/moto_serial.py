"""moto's DynamoDB server, answering one request at a time.

DynamoDB applies each conditional write atomically: of two concurrent conditional PutItems on
one item, exactly one succeeds. moto's own server (`moto_server`) runs threaded and checks a
condition, then writes, without a lock, so two concurrent run claims can both succeed there.
The store's run claim relies on that atomicity, so the local stack serializes requests: still a
threaded server (a slow client does not block the listener), but the application runs under
one lock.

moto backs up a transaction by deep-copying the whole table, once per item of the
transaction, so each `TransactWriteItems` (every turn's commit) grew with everything the run had
stored: late in the end-to-end suite, on a loaded machine, moto answered a few requests a second
and turns ended with STORE_UNAVAILABLE. The backup here copies the partitions the transaction
touches and shares the rest, which the transaction leaves alone: same rollback, constant cost.

    python moto_serial.py HOST PORT
"""

import copy
import signal
import sys
import threading
import types
from collections import defaultdict

from moto.dynamodb import models as ddb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


# (table name, hash key) of every item the running transaction names; requests are serialized,
# so one global is enough.
_touched: set[tuple[str, DynamoType]] | None = None


def _table_backup(table: Table) -> Table:
    """A copy of `table` to restore if the transaction fails: the touched partitions copied
    deeply, the others' item maps copied shallowly (their items are not written)."""
    backup = copy.copy(table)
    items = defaultdict(dict)
    for hash_key, partition in table.items.items():
        if (table.name, hash_key) in _touched:
            items[hash_key] = copy.deepcopy(partition)
        elif isinstance(partition, dict):
            items[hash_key] = dict(partition)
        else:
            items[hash_key] = partition
    backup.items = items
    return backup


def _deepcopy(value, memo=None):
    if isinstance(value, Table) and _touched is not None:
        return _table_backup(value)
    return copy.deepcopy(value, memo)


def _transact_write_items(original):
    def transact_write_items(self, transact_items):
        global _touched
        touched = set()
        try:
            for item in transact_items:
                _, op = next(iter(item.items()))
                table = self.get_table(op["TableName"])
                key = op.get("Key") or op["Item"]
                touched.add((table.name, DynamoType(key[table.hash_key_attr])))
        except Exception:  # moto reports a malformed transaction itself; back up everything
            touched = None
        _touched = touched
        try:
            return original(self, transact_items)
        finally:
            _touched = None

    return transact_write_items


def _patch_transaction_backup() -> None:
    ddb_models.copy = types.SimpleNamespace(deepcopy=_deepcopy, copy=copy.copy)
    ddb_models.DynamoDBBackend.transact_write_items = _transact_write_items(
        ddb_models.DynamoDBBackend.transact_write_items
    )


def main() -> None:
    _patch_transaction_backup()
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serial(environ, start_response):
        with lock:
            # Consume the body inside the lock: the write happens while it is produced.
            return list(app(environ, start_response))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(host, port, serial, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

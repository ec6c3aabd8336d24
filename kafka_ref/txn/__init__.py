"""Producer ids and transactions: `producer_ids` hands out producer ids in blocks; the
transaction coordinator keeps its state in `__transaction_state` (`transaction_log`), moves
it along `transaction_metadata`'s state machine and runs the protocol (`coordinator`)."""

"""Producer ids and (later) transactions: `producer_ids` hands out producer ids in blocks."""

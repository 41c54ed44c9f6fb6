import Postgres

extension PostgresResult {
    /// The result's columns, for a loop over many rows: it finds each column's position by name once
    /// (`columnIndex.position(of: "amount")`) and reads every row at it, where a read by name would look the name
    /// up again for every value. A name the result lacks fails even when no row came back.
    var columnIndex: PostgresColumns { rows.first?.columns ?? PostgresColumns(columns) }
}

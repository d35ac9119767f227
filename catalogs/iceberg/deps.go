package iceberg

import (
	_ "github.com/apache/arrow-go/v18/arrow/compute"
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/codec"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	_ "github.com/apache/iceberg-go/table"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/uptrace/bun/driver/sqliteshim"
)

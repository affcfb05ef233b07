-- CreateTable
CREATE TABLE "wallet_call" (
    "id" BIGSERIAL NOT NULL,
    "request_reference_no" VARCHAR(50) NOT NULL,
    "service" VARCHAR(16) NOT NULL,
    "operation" VARCHAR(48) NOT NULL,
    "method" VARCHAR(8) NOT NULL,
    "path" VARCHAR(512) NOT NULL,
    "http_status" INTEGER,
    "outcome" VARCHAR(16) NOT NULL,
    "error_code" VARCHAR(64),
    "duration_ms" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "wallet_call_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "wallet_call_request_reference_no_idx" ON "wallet_call"("request_reference_no");

-- CreateIndex
CREATE INDEX "wallet_call_started_at_idx" ON "wallet_call"("started_at");

-- wallet_call is an append-only audit record: refuse updates and deletes of its rows.
CREATE FUNCTION "walletflow_refuse_row_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER "wallet_call_append_only" BEFORE UPDATE OR DELETE ON "wallet_call"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_refuse_row_change"();

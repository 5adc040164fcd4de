variable "region" {
  description = "AWS region for the tables and the bucket, e.g. eu-central-1 (the app's AWS_REGION)."
  type        = string
}

variable "prefix" {
  description = "Prefix of the four table names (the app's NDIRO_TABLE_PREFIX)."
  type        = string
  default     = "ndiro-"
}

variable "bucket_name" {
  description = "Name of the private photo bucket (the app's NDIRO_BUCKET); globally unique."
  type        = string
}

variable "max_read_request_units" {
  description = "On-demand throughput cap per table, read request units per second: a runaway loop costs at most this."
  type        = number
  default     = 500
}

variable "max_write_request_units" {
  description = "On-demand throughput cap per table, write request units per second."
  type        = number
  default     = 200
}

variable "region" {
  description = "AWS region for the tables and the bucket, e.g. eu-central-1 (the app's AWS_REGION)."
  type        = string
}

variable "prefix" {
  description = "Prefix of the four table names (the app's NDIRO_TABLE_PREFIX) and of the IAM policy and roles."
  type        = string
  default     = "ndiro-"

  # What the app accepts in NDIRO_TABLE_PREFIX (internal/config): it starts
  # a table name, and goes into the env file unquoted.
  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{0,200}$", var.prefix))
    error_message = "prefix must be at most 200 characters from A-Z, a-z, 0-9, '_', '-' and '.'."
  }
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

variable "photo_versions_days" {
  description = "Days S3 keeps a deleted or replaced photo as a noncurrent version before removing it for good: how far back photos can be restored, and how long an account deletion's photos stay in the bucket. 35 matches the tables' point-in-time recovery."
  type        = number
  default     = 35

  validation {
    condition     = var.photo_versions_days >= 1 && var.photo_versions_days <= 365 && floor(var.photo_versions_days) == var.photo_versions_days
    error_message = "photo_versions_days must be a whole number of days from 1 to 365."
  }
}

variable "instance_profile" {
  description = "Create an IAM role holding only the app policy, and an EC2 instance profile for it (ndiro on an EC2 instance, under systemd or in a container)."
  type        = bool
  default     = true
}

variable "ecs_task_role" {
  description = "Create an IAM role holding only the app policy for ECS tasks to assume (ndiro's container on ECS or Fargate: the task definition's taskRoleArn)."
  type        = bool
  default     = false
}

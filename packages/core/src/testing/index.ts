// The public API of @governor/core/testing: helpers for people who write a Store.

export {
  describeStoreContract,
  type StoreContractOptions,
  type StoreFactoryOptions,
} from "./store-contract.ts";

//! `dpaudit doctor`.

use dpaudit_cli::args::doctor::Args;
use dpaudit_train::runtime::RuntimeInfo;

pub fn run(args: Args) -> anyhow::Result<()> {
    let info = RuntimeInfo::probe();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("libtorch version : {}", info.libtorch_version);
    println!("libtorch lib dir : {}", info.libtorch_lib_dir);
    println!(
        "CUDA available   : {}",
        if info.cuda_available { "yes" } else { "no" }
    );
    println!("CUDA devices     : {}", info.cuda_device_count);
    println!(
        "cuDNN available  : {}",
        if info.cudnn_available { "yes" } else { "no" }
    );
    println!(
        "device           : {}",
        info.device_name.as_deref().unwrap_or("cpu")
    );
    println!("threads          : {}", info.num_threads);
    println!("host memory      : {}", info.host_memory);
    Ok(())
}
